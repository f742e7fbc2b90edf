# A real Rails 6.1 app with Devise 4.8's own sign-in form and Action Cable identified through Warden,
# for the tests (src/rails-devise.ts starts it). Everything it writes goes to RAILS_DEVISE_STATE, a
# directory of its own per start, so that several starts run side by side.
require_relative "config/application"

Rails.application.initialize!
require_relative "lib/seed"
Seed.users(Integer(ENV.fetch("RAILS_DEVISE_USERS", "100")))

run Rails.application
