<?php

namespace App\Http\Controllers;

use Illuminate\Http\Request;

/**
 * The page a signed-in browser lands on. A load-test scenario captures the user's id and the CSRF
 * token from it: from the meta tags of the HTML, or from the JSON when it sends Accept: application/json.
 */
class DashboardController extends Controller
{
    public function __invoke(Request $request)
    {
        $user = $request->user();
        if ($request->expectsJson()) {
            return ['id' => $user->id, 'name' => $user->name, 'email' => $user->email, 'csrf' => csrf_token()];
        }

        return view('dashboard', ['user' => $user]);
    }
}
