# The admin's Batches page model (unmanaged: no table is created).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("djqueue", "0005_limits"),
    ]

    operations = [
        migrations.CreateModel(
            name="Batch",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "batch",
                "verbose_name_plural": "batches",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
