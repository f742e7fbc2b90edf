<?php

// What the test harness (cable-test-servers/src/laravel.ts) sets per start.
return [
    // Every sign-in and sign-out appends a JSON line here (see App\Support\LoginLog).
    'login_log' => env('CABLE_LOGIN_LOG', storage_path('logins.jsonl')),

    // How many users the seeder creates: userN@example.test / password-N.
    'users' => (int) env('CABLE_USERS', 100),

    // Laravel's `throttle` on POST /login, as `max,decayMinutes` ("60,1" is a common choice;
    // "5,0.1" is 5 a source address per 6 s); empty: none.
    'login_throttle' => env('CABLE_LOGIN_THROTTLE', ''),

    // Whether /broadcasting/auth (session) requires the CSRF token, as the web group's POSTs do.
    'broadcast_auth_csrf' => (bool) env('CABLE_BROADCAST_AUTH_CSRF', true),
];
