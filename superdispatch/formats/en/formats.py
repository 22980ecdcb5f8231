"""One way to show a time on every page of the console: to the second, with its zone
(`2026-12-07 11:59:22 UTC`). A hold lasts about a minute, so a time without seconds cannot say
whether it has lapsed; the admin's own English format ("Dec. 7, 2026, noon") has neither."""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = DATE_FORMAT
TIME_FORMAT = "H:i:s T"
