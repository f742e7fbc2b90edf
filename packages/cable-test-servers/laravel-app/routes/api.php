<?php

use App\Http\Controllers\ApiTokenController;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Broadcast;
use Illuminate\Support\Facades\Route;

// Under the api group: prefix /api, no session, no CSRF.
Route::post('/login', [ApiTokenController::class, 'store']);

Route::middleware('auth:api')->group(function () {
    Route::get('/user', fn (Request $request) => $request->user()->only(['id', 'name', 'email']));
    Route::post('/logout', [ApiTokenController::class, 'destroy']);
});

// POST /api/broadcasting/auth: the same channels (routes/channels.php) for a bearer token. auth:api
// makes the token guard the request's default, so the channel callbacks get the token's user.
Broadcast::routes(['middleware' => ['auth:api']]);
