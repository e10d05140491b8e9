// Sign-in: the organisation's OpenID Connect provider (when control-api has one), a device with an
// enrolment code (POST /v1/auth/device/register), or a pasted access token. No token is ever put
// in a URL; the session stays in this tab's sessionStorage.
import { h, replace } from '../dom.js';
import * as session from '../session.js';

export function signIn(main, done, problem = null) {
  const error = h('div', { class: 'error-box', role: 'alert', hidden: true });
  const fail = (e) => {
    error.hidden = false;
    error.textContent = e.message;
  };
  if (problem) fail(problem);
  const code = h('input', { id: 'enrol-code', name: 'code', autocomplete: 'off', required: true, spellcheck: 'false' });
  const device = h('input', { id: 'enrol-device', name: 'device', value: 'Web console', required: true, maxlength: 200 });
  const token = h('textarea', { id: 'paste-token', name: 'token', required: true, spellcheck: 'false', autocomplete: 'off' });
  const enrolForm = h('form', { class: 'stacked', id: 'enrol-form' },
    h('label', { for: 'enrol-code' }, 'Enrolment code'),
    code,
    h('p', { class: 'hint', id: 'enrol-hint' }, 'A one-time code from your admin (swarmdeck tenant create prints them).'),
    h('label', { for: 'enrol-device' }, 'Name of this device'),
    device,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Sign in with the code')));
  code.setAttribute('aria-describedby', 'enrol-hint');
  enrolForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await session.enrol(code.value, device.value);
      done();
    } catch (e) {
      fail(e);
    }
  });
  const tokenForm = h('form', { class: 'stacked', id: 'token-form' },
    h('label', { for: 'paste-token' }, 'Access token'),
    token,
    h('p', { class: 'hint', id: 'token-hint' }, 'An access token (JWT) for your tenant; it is kept in this tab only and ends with its expiry.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Use this token')));
  token.setAttribute('aria-describedby', 'token-hint');
  tokenForm.addEventListener('submit', (event) => {
    event.preventDefault();
    try {
      session.useToken(token.value);
      done();
    } catch (e) {
      fail(e);
    }
  });
  const providerSection = h('section', { 'aria-labelledby': 'provider-heading', hidden: true });
  replace(main,
    h('div', { class: 'signin' },
      h('h1', {}, 'Sign in'),
      error,
      providerSection,
      h('section', { 'aria-labelledby': 'enrol-heading' }, h('h2', { id: 'enrol-heading' }, 'This browser as a device'), enrolForm),
      h('section', { 'aria-labelledby': 'token-heading' }, h('h2', { id: 'token-heading' }, 'With a token'), tokenForm)));
  // The organisation's provider, when control-api has one: the browser goes there and back.
  session.provider().then((provider) => {
    if (!provider) return;
    const button = h('button', { type: 'button', id: 'provider-signin' }, `Sign in with ${provider.name}`);
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        await session.startProviderSignIn(device.value || 'Web console');
      } catch (e) {
        button.disabled = false;
        fail(e);
      }
    });
    replace(providerSection,
      h('h2', { id: 'provider-heading' }, 'With your organisation\'s account'),
      h('p', { class: 'hint' }, `Through ${provider.name}; this browser becomes a device named as below.`),
      h('div', { class: 'actions' }, button));
    providerSection.hidden = false;
  });
}
