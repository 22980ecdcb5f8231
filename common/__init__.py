"""What every layer may import: the settings read once, and the API's one error shape.

A leaf: it imports nothing else of SuperDispatch's.
"""
