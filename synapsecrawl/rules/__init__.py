"""What a site owner allows: robots.txt (RFC 9309) and its fetch policy, TDM reservations (TDMRep)."""
