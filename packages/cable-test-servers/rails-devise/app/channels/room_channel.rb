class RoomChannel < ApplicationCable::Channel
  def subscribed
    stream_from stream
  end

  # The server names the author: whatever author the client put in its data is overwritten.
  def speak(data)
    ActionCable.server.broadcast(stream, data.merge("author_id" => current_user.id, "author_email" => current_user.email))
  end

  private

  def stream
    "room_#{params[:room]}"
  end
end
