require_relative "../../lib/event_log"

# Warden's own hooks, so that the log sees every sign-in however Devise's controllers change.
Warden::Manager.after_authentication do |user, _auth, opts|
  EventLog.sign_in("sign_in", user.id, opts[:scope]) if user.respond_to?(:id)
end

Warden::Manager.before_logout do |user, _auth, opts|
  EventLog.sign_in("sign_out", user.id, opts[:scope]) if user.respond_to?(:id)
end
