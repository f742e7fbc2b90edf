<?php

use App\Http\Middleware\RequireCsrfToken;
use Illuminate\Foundation\Application;
use Illuminate\Foundation\Configuration\Exceptions;
use Illuminate\Foundation\Configuration\Middleware;
use Illuminate\Http\Request;

return Application::configure(basePath: dirname(__DIR__))
    ->withRouting(
        web: __DIR__.'/../routes/web.php',
        api: __DIR__.'/../routes/api.php',
        commands: __DIR__.'/../routes/console.php',
        health: '/up',
    )
    // The web group (session + CSRF), as in a stock app. Laravel 11 exempts /broadcasting/auth
    // from CSRF; RequireCsrfToken puts the check back (unless CABLE_BROADCAST_AUTH_CSRF=0) so a
    // load-test client that forgets the header fails here as it would on an app that checks.
    ->withBroadcasting(__DIR__.'/../routes/channels.php', ['middleware' => ['web', RequireCsrfToken::class]])
    ->withMiddleware(function (Middleware $middleware) {
        //
    })
    ->withExceptions(function (Exceptions $exceptions) {
        // A token client posts JSON without asking for it back: answer it in JSON (401, 422)
        // rather than with a redirect to /login, as Sanctum's recipe expects.
        $exceptions->shouldRenderJsonWhen(fn (Request $request) => $request->is('api/*') || $request->expectsJson());
    })->create();
