"""The small Trio HTTP/1.1 server behind the metrics endpoint and the stand-in provider."""
