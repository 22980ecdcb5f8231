"""SuperDispatch: which agent takes the card, and why."""
