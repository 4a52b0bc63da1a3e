"""Record batches (v2) and legacy message sets (v0/v1), with their compression codecs."""
