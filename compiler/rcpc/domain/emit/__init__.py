"""Emitters of the domain's values: MaxText flag tokens and their shell form."""
