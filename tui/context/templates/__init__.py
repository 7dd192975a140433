"""Where a chat template comes from, and how untrusted Jinja runs: sandboxed, bounded, interruptible."""
