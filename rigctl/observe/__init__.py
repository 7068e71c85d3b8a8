"""The one live pipeline: poll once, judge the alerts once, record once. `rigctl watch` runs it
keeping the record; the TUI runs the same object and renders its ticks, keeping the record only
while no watch service does."""
