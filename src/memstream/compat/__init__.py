"""Drop-in replacements for APIs people already use: switch with an import change."""
