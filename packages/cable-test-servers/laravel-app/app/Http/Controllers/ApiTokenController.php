<?php

namespace App\Http\Controllers;

use App\Models\User;
use App\Support\LoginLog;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Hash;
use Illuminate\Support\Str;
use Illuminate\Validation\ValidationException;

/**
 * Sanctum's "issuing API tokens" recipe on the framework's token guard (no laravel/sanctum in the
 * vendored app): one token per user, so signing in again revokes the previous token.
 */
class ApiTokenController extends Controller
{
    public function store(Request $request): JsonResponse
    {
        $credentials = $request->validate([
            'email' => ['required', 'string', 'email'],
            'password' => ['required', 'string'],
        ]);

        $user = User::where('email', $credentials['email'])->first();
        if (! $user || ! Hash::check($credentials['password'], $user->password)) {
            throw ValidationException::withMessages(['email' => 'These credentials do not match our records.']);
        }

        $token = Str::random(60);
        $hash = hash('sha256', $token);
        $user->forceFill(['api_token' => $hash])->save();
        LoginLog::append('login', 'token', $user->id, self::tokenId($hash));

        return response()->json(['token' => $token]);
    }

    public function destroy(Request $request): JsonResponse
    {
        $user = $request->user();
        $hash = $user->api_token;
        $user->forceFill(['api_token' => null])->save();
        LoginLog::append('logout', 'token', $user->id, self::tokenId($hash));

        return response()->json(['ok' => true]);
    }

    /** What the login log names a token sign-in by: enough of its hash to pair login and logout. */
    private static function tokenId(string $hash): string
    {
        return 'token:'.substr($hash, 0, 16);
    }
}
