# A bare Rails Action Cable app (no Rails application) for the integration tests.
# Channels mirror the local target's (packages/cable-local-target) so that one conformance
# suite runs against both.
require "action_cable"
require "json"
require "logger"
require "net/http"

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

# What the channels say, once: Action Cable's channel classes below and the AnyCable RPC at the end
# both build their frames here.
module Frames
  def self.chat_stream(room) = "chat_#{room}"

  def self.new_message(author, data)
    extra = data.reject { |k, _| k == "action" || k == "message" }
    { "action" => "newMessage", "author_id" => author, "message" => data["message"] }.merge(extra)
  end

  def self.broadcast_result(data) = data.merge("action" => "broadcastResult")
end

class ChatChannel < ApplicationCable::Channel
  def subscribed
    stream_from Frames.chat_stream(params[:id])
  end

  def speak(data)
    ActionCable.server.broadcast(Frames.chat_stream(params[:id]), Frames.new_message(current_user, data))
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
    transmit Frames.broadcast_result(data)
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

# AnyCable's HTTP RPC (anycable-go --rpc_host=http://…/_anycable) for the same channels and the same
# cookie check, so that one scenario runs on Action Cable and on AnyCable (seed 000's comparison).
# anycable-rails, which would dispatch into the classes above, is not in Debian; this is its stand-in:
# the same answers on the wire (welcome, confirm/reject, transmissions, streams), broadcasts sent to
# anycable-go's HTTP broadcast endpoint (ANYCABLE_BROADCAST_URL) as anycable-rails' HTTP adapter does.
# The channel behaviour is asserted on both servers by the same tests (rails.test.ts).
module AnyCableRpc
  ERROR = 0
  SUCCESS = 1
  FAILURE = 2

  def self.call(env)
    request = Rack::Request.new(env)
    return [405, {}, []] unless request.post?
    body = JSON.parse(request.body.read)
    answer =
      case request.path_info
      when "/connect" then connect(body)
      when "/command" then command(body)
      when "/disconnect" then { status: SUCCESS }
      else return [404, {}, []]
      end
    [200, { "content-type" => "application/json" }, [JSON.generate(answer)]]
  rescue JSON::ParserError => e
    [400, { "content-type" => "application/json" }, [JSON.generate(status: ERROR, error_msg: e.message)]]
  end

  def self.connect(body)
    cookies = Rack::Utils.parse_cookies_header(body.dig("env", "headers", "cookie") || "")
    uid = cookies["uid"]
    if uid.nil? || uid.empty?
      return { status: FAILURE, transmissions: [JSON.generate(type: "disconnect", reason: "unauthorized", reconnect: false)] }
    end
    { status: SUCCESS, identifiers: JSON.generate(current_user: uid.split("/").last), transmissions: [JSON.generate(type: "welcome")] }
  end

  def self.command(body)
    identifier = body["identifier"]
    params = JSON.parse(identifier)
    user = JSON.parse(body["connection_identifiers"] || "{}")["current_user"]
    case [params["channel"], body["command"]]
    when ["ChatChannel", "subscribe"] then confirm(identifier, Frames.chat_stream(params["id"]))
    when ["BenchmarkChannel", "subscribe"] then confirm(identifier, "all")
    when ["RejectChannel", "subscribe"] then { status: FAILURE, transmissions: [JSON.generate(identifier: identifier, type: "reject_subscription")] }
    when ["ChatChannel", "unsubscribe"], ["BenchmarkChannel", "unsubscribe"] then { status: SUCCESS, stop_streams: true }
    when ["ChatChannel", "message"] then chat(params, user, JSON.parse(body["data"]))
    when ["BenchmarkChannel", "message"] then benchmark(identifier, JSON.parse(body["data"]))
    else { status: ERROR, error_msg: "unknown command #{body["command"]} for #{params["channel"]}" }
    end
  end

  def self.confirm(identifier, stream)
    { status: SUCCESS, streams: [stream], transmissions: [JSON.generate(identifier: identifier, type: "confirm_subscription")] }
  end

  def self.chat(params, user, data)
    case data["action"]
    when "speak"
      broadcast(Frames.chat_stream(params["id"]), Frames.new_message(user, data))
      { status: SUCCESS }
    when "leave" then { status: SUCCESS, disconnect: true }
    else { status: ERROR, error_msg: "ChatChannel has no action #{data["action"]}" }
    end
  end

  def self.benchmark(identifier, data)
    case data["action"]
    when "echo" then { status: SUCCESS, transmissions: [JSON.generate(identifier: identifier, message: data)] }
    when "broadcast"
      broadcast("all", data)
      { status: SUCCESS, transmissions: [JSON.generate(identifier: identifier, message: Frames.broadcast_result(data))] }
    else { status: ERROR, error_msg: "BenchmarkChannel has no action #{data["action"]}" }
    end
  end

  def self.broadcast(stream, message)
    uri = URI(ENV.fetch("ANYCABLE_BROADCAST_URL"))
    Net::HTTP.post(uri, JSON.generate(stream: stream, data: JSON.generate(message)), "Content-Type" => "application/json")
  end
end

map "/_anycable" do
  run AnyCableRpc
end
