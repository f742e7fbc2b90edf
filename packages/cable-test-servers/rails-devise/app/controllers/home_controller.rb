# A page with the layout's csrf-token meta tag once signed in: Devise drops the session's CSRF token
# at sign-in, so a sign-out needs a token read after it.
class HomeController < ApplicationController
  def show; end
end
