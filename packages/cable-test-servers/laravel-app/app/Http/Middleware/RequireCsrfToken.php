<?php

namespace App\Http\Middleware;

use Closure;
use Illuminate\Foundation\Http\Middleware\ValidateCsrfToken;
use Illuminate\Http\Request;

/**
 * The web group's CSRF check, for a route Laravel exempts from it: BroadcastManager::routes()
 * registers /broadcasting/auth withoutMiddleware(VerifyCsrfToken), which removes every subclass
 * too, so this delegates rather than extends.
 */
class RequireCsrfToken
{
    public function handle(Request $request, Closure $next)
    {
        if (! config('cable.broadcast_auth_csrf')) {
            return $next($request);
        }

        return app(ValidateCsrfToken::class)->handle($request, $next);
    }
}
