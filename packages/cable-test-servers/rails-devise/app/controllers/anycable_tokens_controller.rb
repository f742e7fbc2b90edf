require_relative "../../lib/anycable_jwt"

# A signed-in user's ticket to anycable-go: the identifiers ApplicationCable::Connection would set
# (current_user, as anycable-rails serializes a record: its GlobalID).
class AnycableTokensController < ApplicationController
  before_action :authenticate_user!

  # ?ttl=<seconds> (default an hour); a negative one mints an expired token, for tests.
  def show
    ttl = params.fetch(:ttl, 3600).to_i.clamp(-3600, 86_400)
    render json: { token: AnycableJwt.encode({ current_user: current_user.to_gid.to_s }, expires_in: ttl) }
  end
end
