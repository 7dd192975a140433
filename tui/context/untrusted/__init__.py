"""What keeps outside text from forging structure, leaking secrets or reaching a terminal raw."""
