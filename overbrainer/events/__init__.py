"""Progress events, the bus that fans them out, and their JSON form."""
