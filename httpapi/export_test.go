package httpapi

import "github.com/gorilla/mux"

// Router exposes the router to the tests that walk the routes.
func (s *Server) Router() *mux.Router { return s.router }
