"""What a site owner allows: robots.txt, robots directives, TDM reservations, removals."""
