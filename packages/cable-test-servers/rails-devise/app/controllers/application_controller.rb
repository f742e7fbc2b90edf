class ApplicationController < ActionController::Base
  # prepend: the token is checked before Devise authenticates anyone (Devise's README asks for it).
  protect_from_forgery with: :exception, prepend: true
end
