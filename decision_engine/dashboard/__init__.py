"""The accuracy dashboard: server-rendered pages over the decision store, served at /dashboard."""
