# One stream per user (its GlobalID): what one user is sent, no other user sees.
class NotificationsChannel < ApplicationCable::Channel
  def subscribed
    stream_for current_user
  end

  def ping_self(data)
    NotificationsChannel.broadcast_to(current_user, data.merge("user_id" => current_user.id))
  end
end
