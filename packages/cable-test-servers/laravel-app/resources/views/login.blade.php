<!DOCTYPE html>
<html lang="en">
<head>
    <meta charset="utf-8">
    <meta name="csrf-token" content="{{ csrf_token() }}">
    <title>Log in</title>
</head>
<body>
    <form method="POST" action="{{ route('login') }}">
        @csrf
        <label>Email <input type="email" name="email" value="{{ old('email') }}" required autofocus></label>
        @error('email')
            <p class="error">{{ $message }}</p>
        @enderror
        <label>Password <input type="password" name="password" required></label>
        <button type="submit">Log in</button>
    </form>
</body>
</html>
