"""A cron text read aloud in the page's language (`djqueue.web.cron_words`): the common forms
in every catalog, the rest left to the cron text (or to cronsim's English on an English page)."""

from __future__ import annotations

import redis

from djqueue.periodic_cron import parse
from djqueue.web import i18n
from djqueue.web.cron_words import reading
from djqueue.web.periodic import periodic_list

#: Each form read, and what it reads in English and Japanese.
READ = [
    ("* * * * *", "Every minute", "毎分"),
    ("*/15 * * * *", "Every 15 minutes", "15 分ごと"),
    ("@hourly", "Every hour at minute 0", "毎時 0 分"),
    ("15 */6 * * *", "Every 6 hours at minute 15", "6 時間ごと、15 分"),
    ("30 9 * * *", "Every day at 09:30", "毎日 09:30"),
    (
        "0 9 * * MON-FRI",
        "Every weekday (Monday to Friday) at 09:00",
        "平日（月曜日から金曜日）の 09:00",
    ),
    ("0 4 * * 1", "Every Monday at 04:00", "毎週月曜日 04:00"),
    ("0 4 * * 7", "Every Sunday at 04:00", "毎週日曜日 04:00"),
    ("@monthly", "On day 1 of every month at 00:00", "毎月1日 00:00"),
    ("0 12 25 dec *", "Every year on December 25 at 12:00", "毎年12月25日 12:00"),
    ("* * * * * *", "Every second", "毎秒"),
    ("*/10 * * * * *", "Every 10 seconds", "10 秒ごと"),
    ("0 30 9 * * * Asia/Tokyo", "Every day at 09:30", "毎日 09:30"),
]
#: Forms left to the cron text: lists, ranges, steps that do not divide the hour or the day,
#: both day fields, seconds beside a restricted field.
UNREAD = [
    "0 9 * * 1,3,5",
    "0 9-17 * * *",
    "*/7 * * * *",
    "0 */5 * * *",
    "0 0 1 * 1",
    "0 0 * 6 *",
    "*/10 5 * * * *",
    "0 0 L * *",
]


def test_the_common_forms_read_in_each_language() -> None:
    for text, english, japanese in READ:
        assert reading(parse(text)) == english, text
        with i18n.active("ja"):
            assert reading(parse(text)) == japanese, text
        for language in ("fa", "zh_Hans"):
            with i18n.active(language):
                words = reading(parse(text))
            assert words and words != english, (language, text, words)
    with i18n.active("fa"):
        assert reading(parse("0 4 * * 1")) == "هر دوشنبه ساعت 04:00"
    with i18n.active("zh_Hans"):
        assert reading(parse("*/15 * * * *")) == "每 15 分钟"


def test_other_forms_are_left_to_the_cron_text() -> None:
    for text in UNREAD:
        for language in ("en", "ja"):
            with i18n.active(language):
                assert reading(parse(text)) == "", (language, text)


def test_the_periodic_page_reads_a_schedule_in_the_page_language(r: redis.Redis) -> None:
    for name, cron in (("nightly", "30 2 * * *"), ("odd", "0 9 * * 1,3,5")):
        r.sadd("cron_jobs", f"cron_job:{name}")
        r.hset(f"cron_job:{name}", mapping={"name": name, "klass": "J", "cron": cron})

    def readings(language: str) -> dict[str, str]:
        with i18n.active(language):
            return {row.name: row.schedule for row in periodic_list().rows}

    english = readings("en")
    assert english["nightly"] == "Every day at 02:30"
    assert english["odd"] and "Monday" in english["odd"]  # cronsim's English for the rest
    assert readings("ja") == {"nightly": "毎日 02:30", "odd": ""}
