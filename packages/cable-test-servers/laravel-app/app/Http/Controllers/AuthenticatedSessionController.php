<?php

namespace App\Http\Controllers;

use App\Support\LoginLog;
use Illuminate\Http\RedirectResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Auth;
use Illuminate\View\View;

/** The browser's sign-in, as Breeze's controller of the same name does it (without its rate limit). */
class AuthenticatedSessionController extends Controller
{
    public function create(): View
    {
        return view('login');
    }

    public function store(Request $request): RedirectResponse
    {
        $credentials = $request->validate([
            'email' => ['required', 'string', 'email'],
            'password' => ['required', 'string'],
        ]);

        if (! Auth::attempt($credentials)) {
            return back()->withErrors(['email' => 'These credentials do not match our records.'])->onlyInput('email');
        }

        // A new session id at sign-in (session fixation): the response replaces the session cookie.
        $request->session()->regenerate();
        LoginLog::append('login', 'session', (int) Auth::id(), $request->session()->getId());

        return redirect()->intended(route('dashboard', absolute: false));
    }

    public function destroy(Request $request): RedirectResponse
    {
        $userId = (int) Auth::id();
        $sessionId = $request->session()->getId();

        Auth::guard('web')->logout();
        $request->session()->invalidate();
        $request->session()->regenerateToken();
        LoginLog::append('logout', 'session', $userId, $sessionId);

        return redirect('/');
    }
}
