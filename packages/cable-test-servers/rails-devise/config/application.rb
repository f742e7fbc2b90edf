require "rails"
require "active_record/railtie"
require "action_controller/railtie"
require "action_view/railtie"
# Devise's app/mailers/devise/mailer.rb defines Devise::Mailer only with Action Mailer loaded, and
# eager loading (production) expects every file in an engine's app/ to define its constant.
require "action_mailer/railtie"
require "action_cable/engine"
# stream_for / broadcast_to name a user's stream by its GlobalID.
require "global_id/railtie"
require "devise"

STATE = ENV.fetch("RAILS_DEVISE_STATE")
PORT = Integer(ENV.fetch("RAILS_DEVISE_PORT"))

# Rails raises at boot without a config/database.yml unless DATABASE_URL names the database (set
# here, not taken from the caller's environment). The pool covers puma's 32 threads and Action
# Cable's workers at once.
ENV["DATABASE_URL"] = "sqlite3:#{STATE}/db.sqlite3?pool=64&timeout=5000"

module RailsDevise
  class Application < Rails::Application
    config.load_defaults 6.1
    config.root = File.expand_path("..", __dir__)
    # Nothing may land in the shared app directory: parallel starts would collide there.
    config.paths["tmp"] = File.join(STATE, "tmp")
    config.paths["log"] = File.join(STATE, "log")

    # Production without an environment file: no reloading, everything loaded before the first
    # request (puma loads the app before it binds, so a listening port means a booted app).
    config.eager_load = true
    config.cache_classes = true
    config.consider_all_requests_local = false
    config.secret_key_base = ENV.fetch("SECRET_KEY_BASE")
    config.logger = ActiveSupport::Logger.new($stdout)
    config.log_level = ENV.fetch("RAILS_LOG_LEVEL", "warn").to_sym

    # Loopback requests are refused by host authorization otherwise (in development).
    config.hosts.clear

    config.action_cable.cable = { "adapter" => "async" }
    config.action_cable.mount_path = "/cable"
    # The engine sends `Origin: http://<host:port of the ws URL>`, as a browser on the page would.
    config.action_cable.allowed_request_origins = ["http://127.0.0.1:#{PORT}", "http://localhost:#{PORT}"]
    config.action_cable.worker_pool_size = Integer(ENV.fetch("CABLE_WORKERS", "8"))
  end
end
