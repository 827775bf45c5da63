"""The REST service: a Litestar app that decides requests and stores decisions and labels."""
