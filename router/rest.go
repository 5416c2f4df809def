package router

import "net/http"

func (r *Router) restRoutes(mux *http.ServeMux) {}
