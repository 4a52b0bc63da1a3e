"""Code generator: Kafka JSON specs -> wire/generated/.

Hand-written, and never imported at run time.
"""
