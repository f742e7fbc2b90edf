# A bare Rails Action Cable app (no Rails application) for the integration tests.
# Channels mirror the local target's (packages/cable-local-target) so that one conformance
# suite runs against both.
require "action_cable"
require "logger"

ActionCable.server.config.cable = { "adapter" => "async" }
ActionCable.server.config.logger = Logger.new(ENV["CABLE_LOG"] || $stderr, level: Logger::WARN)
ActionCable.server.config.disable_request_forgery_protection = true
ActionCable.server.config.worker_pool_size = Integer(ENV.fetch("CABLE_WORKERS", "8"))

module ApplicationCable
  class Connection < ActionCable::Connection::Base
    identified_by :current_user

    def connect
      # `cookies` needs Rails' cookie-jar middleware, absent in a bare app; the Rack request has them.
      uid = request.cookies["uid"]
      reject_unauthorized_connection if uid.nil? || uid.empty?
      self.current_user = uid.split("/").last
    end
  end

  class Channel < ActionCable::Channel::Base
  end
end

class ChatChannel < ApplicationCable::Channel
  def subscribed
    stream_from "chat_#{params[:id]}"
  end

  def speak(data)
    extra = data.reject { |k, _| k == "action" || k == "message" }
    ActionCable.server.broadcast(
      "chat_#{params[:id]}",
      { "action" => "newMessage", "author_id" => current_user, "message" => data["message"] }.merge(extra)
    )
  end

  def leave(_data)
    connection.close(reason: "remote", reconnect: false)
  end
end

# AnyCable's benchmark channel: echo to the sender, or broadcast to everyone on "all".
class BenchmarkChannel < ApplicationCable::Channel
  def subscribed
    stream_from "all"
  end

  def echo(data)
    transmit data
  end

  def broadcast(data)
    ActionCable.server.broadcast "all", data
    transmit data.merge("action" => "broadcastResult")
  end
end

class RejectChannel < ApplicationCable::Channel
  def subscribed
    reject
  end
end

ActionCable.server.config.connection_class = -> { ApplicationCable::Connection }

map "/cable" do
  run ActionCable.server
end
