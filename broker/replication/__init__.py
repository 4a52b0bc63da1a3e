"""Partition replication: a leader's followers and ISR, the ISR changes it asks the
controller for, and the fetchers that keep followers' logs up with their leaders."""
