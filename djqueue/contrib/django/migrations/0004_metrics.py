# The admin's Metrics page model (unmanaged: no table is created).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("djqueue", "0003_outbox"),
    ]

    operations = [
        migrations.CreateModel(
            name="Metrics",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "metrics",
                "verbose_name_plural": "metrics",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
