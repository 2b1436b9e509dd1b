"""The message model: messages, parts, tool calls, usage and exact-decimal cost, stream events and the accumulator.

The file shape and the rules are those of `spec/messages.md`. Every object reads from and writes to plain data with
`from_data` / `to_data`, keeps unknown keys in `extra`, and round-trips losslessly.
"""

from onellm.messages._usage import CallWarning, Cost, CostLine, Usage, format_money

__all__ = ["CallWarning", "Cost", "CostLine", "Usage", "format_money"]
