<?php

use App\Models\User;
use Illuminate\Support\Facades\Broadcast;

// On the wire: presence-room.{roomId}. The member's info is what other members see.
Broadcast::channel('room.{roomId}', fn (User $user, string $roomId) => ['id' => $user->id, 'name' => $user->name]);

// On the wire: private-App.Models.User.{id}, each user's own channel (Laravel's notifications channel).
Broadcast::channel('App.Models.User.{id}', fn (User $user, string $id) => (int) $user->id === (int) $id);
