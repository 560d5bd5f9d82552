# The transactional outbox's table (ENQUEUE_ON_COMMIT: "outbox"); empty unless it is used.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("djqueue", "0002_periodic"),
    ]

    operations = [
        migrations.CreateModel(
            name="OutboxJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("jid", models.CharField(max_length=64)),
                ("payload", models.TextField()),
                ("run_at", models.FloatField(blank=True, null=True)),
                ("created_at", models.FloatField(db_index=True)),
            ],
            options={
                "verbose_name": "outbox job",
                "db_table": "djqueue_outbox",
                "default_permissions": (),
            },
        ),
    ]
