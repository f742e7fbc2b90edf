<?php

namespace Database\Seeders;

use Illuminate\Database\Seeder;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Hash;

/**
 * User i (1 … cable.users) is id i, "User i", useri@example.test, password "password-i": a pattern
 * the tests and a load test's CSV payload both derive without asking the app.
 */
class DatabaseSeeder extends Seeder
{
    public function run(): void
    {
        $now = now();
        $rows = [];
        for ($i = 1; $i <= config('cable.users'); $i++) {
            $rows[] = [
                'id' => $i,
                'name' => "User {$i}",
                'email' => "user{$i}@example.test",
                'password' => Hash::make("password-{$i}"),
                'created_at' => $now,
                'updated_at' => $now,
            ];
        }
        // 100 rows of 6 columns stay under SQLite's limit on bound variables.
        foreach (array_chunk($rows, 100) as $chunk) {
            DB::table('users')->insert($chunk);
        }
    }
}
