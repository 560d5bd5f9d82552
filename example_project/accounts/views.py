from django import forms
from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

import djqueue

from .jobs import send_welcome


class SignupForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField()
    password = forms.CharField(widget=forms.PasswordInput, min_length=8)

    def clean_username(self) -> str:
        username: str = self.cleaned_data["username"]
        if get_user_model().objects.filter(username=username).exists():
            raise forms.ValidationError("That username is taken.")
        return username


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/home.html")


def signup(request: HttpRequest) -> HttpResponse:
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            user = get_user_model().objects.create_user(**form.cleaned_data)
            # Written to Redis only when this block commits: a rollback sends no email, and
            # the worker never looks for a user that is not there yet.
            jid = send_welcome.perform_later(user.pk)
        return redirect(f"{reverse('welcome')}?job={jid}")
    return render(request, "accounts/signup.html", {"form": form})


def welcome(request: HttpRequest) -> HttpResponse:
    jid = request.GET.get("job", "")
    state = djqueue.status(jid).state if jid else "unknown"
    return render(request, "accounts/welcome.html", {"jid": jid, "state": state})
