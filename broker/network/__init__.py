"""One client connection as a state machine (:mod:`.connection`): framing, in-order
answers, back-pressure, fault rules, tracing and idleness, with no sockets and no event
loop; :mod:`millpond.broker.server` is the asyncio edge that drives it."""
