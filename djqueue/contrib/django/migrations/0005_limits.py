# The admin's Limits page model (unmanaged: no table is created).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("djqueue", "0004_metrics"),
    ]

    operations = [
        migrations.CreateModel(
            name="Limits",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "limits",
                "verbose_name_plural": "limits",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
