# The admin's page models (unmanaged: no table is created).

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Busy",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "busy",
                "verbose_name_plural": "busy",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="Dashboard",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "dashboard",
                "verbose_name_plural": "dashboard",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="DeadJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "dead job",
                "verbose_name_plural": "dead",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "job",
                "managed": False,
                "default_permissions": ("view", "change", "delete"),
            },
        ),
        migrations.CreateModel(
            name="Queue",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "queue",
                "verbose_name_plural": "queues",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="RetryJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "retry",
                "verbose_name_plural": "retries",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="ScheduledJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "scheduled job",
                "verbose_name_plural": "scheduled",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
