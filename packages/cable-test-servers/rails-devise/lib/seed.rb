# The users table and userN@example.test / password-N, ids 1..N: a CSV payload can be written
# without asking the app. Idempotent, so that a restart on the same state directory boots too.
module Seed
  def self.users(count)
    connection = ActiveRecord::Base.connection
    connection.create_table(:users, if_not_exists: true) do |t|
      t.string :email, null: false
      t.string :encrypted_password, null: false
      t.string :reset_password_token
      t.datetime :reset_password_sent_at
      t.datetime :remember_created_at
      t.timestamps
    end
    connection.add_index(:users, :email, unique: true, if_not_exists: true)
    now = Time.now.utc
    rows = (1..count).map do |i|
      { id: i, email: "user#{i}@example.test", encrypted_password: Devise::Encryptor.digest(User, "password-#{i}"), created_at: now, updated_at: now }
    end
    User.insert_all(rows) if rows.any?
  end
end
