"""The theme: the configured one (the ANSI theme on an 8/16-colour terminal when none is), and a
theme picked in the app saved to config.toml ([tui] theme), comments kept."""

from __future__ import annotations

from textual.app import App
from textual.theme import Theme

from rigctl.config import Settings, save_setting
from rigctl.errors import RigctlError

SIXTEEN_COLOURS = ("standard", "windows")  # Rich's names for 8/16-colour terminals
ANSI_THEME = "ansi-dark"  # drawn with the terminal's own palette


def initial_theme(settings: Settings, color_system: str | None) -> str:
    """The configured theme; on an 8/16-colour terminal with none configured, the ANSI theme:
    truecolor themes squeezed into 16 colours lose their contrast."""
    if settings.sources.get("theme", "default") == "default" and color_system in SIXTEEN_COLOURS:
        return ANSI_THEME
    return settings.theme


class ThemeKeeper:
    def __init__(self, app: App[None], settings: Settings) -> None:
        self.app, self.settings = app, settings
        self.saved = settings.theme

    def apply(self) -> None:
        app = self.app
        # A headless app (tests, screenshots) has no terminal whose colours could be asked.
        wanted = initial_theme(self.settings, None if app.is_headless else app.console.color_system)
        self.saved = wanted
        if wanted in app.available_themes:
            app.theme = wanted
        else:
            app.notify(
                f"theme {wanted!r} is not known ({self.settings.sources.get('theme', 'default')}); using {app.theme}",
                severity="warning",
            )
        app.theme_changed_signal.subscribe(app, self.remember)

    def remember(self, theme: Theme) -> None:
        if theme.name == self.saved:
            return
        try:
            path = save_setting("theme", theme.name)
        except (OSError, RigctlError) as exc:
            self.app.notify(f"theme not saved: {exc}", severity="warning")
            return
        self.saved = theme.name
        self.app.notify(f"theme {theme.name} saved to {path}", timeout=3)
