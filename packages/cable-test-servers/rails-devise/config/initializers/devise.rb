Devise.setup do |config|
  require "devise/orm/active_record"
  config.mailer_sender = "rails-devise@example.test"
  # bcrypt's lowest cost: seeding and every sign-in stay fast under load.
  config.stretches = 1
  config.sign_out_via = :delete
end
