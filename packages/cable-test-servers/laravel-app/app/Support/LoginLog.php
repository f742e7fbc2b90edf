<?php

namespace App\Support;

/**
 * One JSON line per sign-in and sign-out, for the tests: they prove from it that no two load-test
 * tasks were signed in as the same user at once. Eight server workers append concurrently, so
 * every line is one locked append.
 */
class LoginLog
{
    /** @param 'login'|'logout' $event  @param 'session'|'token' $via */
    public static function append(string $event, string $via, int $userId, ?string $sessionId): void
    {
        $line = json_encode([
            'event' => $event,
            'via' => $via,
            'user' => $userId,
            'session' => $sessionId,
            // The source address the app saw: per-address limits (throttle) count by it.
            'ip' => request()->ip(),
            'at' => microtime(true),
        ])."\n";
        file_put_contents(config('cable.login_log'), $line, FILE_APPEND | LOCK_EX);
    }
}
