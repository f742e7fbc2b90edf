# Who the server thinks this socket is: the test that a session cookie became a cable identity.
class WhoamiChannel < ApplicationCable::Channel
  def subscribed
    transmit(identity)
  end

  def whoami(_data)
    transmit(identity)
  end

  private

  def identity
    { user_id: current_user.id, email: current_user.email }
  end
end
