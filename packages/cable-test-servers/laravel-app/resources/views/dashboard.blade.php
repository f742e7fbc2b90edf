<!DOCTYPE html>
<html lang="en">
<head>
    <meta charset="utf-8">
    <meta name="csrf-token" content="{{ csrf_token() }}">
    <meta name="user-id" content="{{ $user->id }}">
    <title>Dashboard</title>
</head>
<body>
    <p>Signed in as <span id="user-name">{{ $user->name }}</span> (<span id="user-email">{{ $user->email }}</span>).</p>
    <form method="POST" action="{{ route('logout') }}">
        @csrf
        <button type="submit">Log out</button>
    </form>
</body>
</html>
