"""A shared crawl's work list: the entries and the Redis frontier several machines lease pages from."""
