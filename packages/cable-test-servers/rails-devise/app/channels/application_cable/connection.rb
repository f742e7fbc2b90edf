module ApplicationCable
  class Connection < ActionCable::Connection::Base
    identified_by :current_user

    # The upgrade request went through Rails' middleware, Warden's included: the session cookie
    # names the user, as in the app's pages.
    def connect
      self.current_user = env["warden"].user || begin
        EventLog.cable("reject", nil)
        reject_unauthorized_connection
      end
      EventLog.cable("connect", current_user.id)
    end

    # Called for rejected connections too, which have no user.
    def disconnect
      EventLog.cable("disconnect", current_user.id) if current_user
    end
  end
end
