// One approval gate: what the agent asks, deciding it, and the receipt
// (GET /v1/approval-gates/{id}, POST …/decision).
import { api, seg, errorText, RetryKey } from '../api.js';
import { h, replace, link, badge, table, when, facts } from '../dom.js';
import { current } from '../session.js';
import { announce } from '../app.js';

export async function render(main, [id]) {
  const detail = await api(`/v1/approval-gates/${seg(id)}`);
  const gate = detail.gate;
  const canDecide = current().scopes.includes('approvals:decide');
  const receiptBox = h('section', { id: 'gate-receipt', 'aria-live': 'polite' }, detail.receipt ? receipt(detail.receipt) : null);
  replace(main,
    h('h1', {}, `Approval gate: ${gate.summary}`),
    facts([
      ['Id', gate.gateId],
      ['Status', h('span', { id: 'gate-status' }, badge(gate.status))],
      ['Risk', badge(gate.risk)],
      ['Agent', link(`/agents/${encodeURIComponent(gate.agentId)}`, gate.agentId)],
      ['Swarm', link(`/swarms/${encodeURIComponent(gate.swarmId)}`, gate.swarmId)],
      ['Tool', gate.tool],
      ['Source', detail.source],
      ['Recommended', gate.recommendedAction],
      ['Requested', when(gate.requestedAt)],
      ['Expires', when(gate.expiresAt)],
    ]),
    detail.toolInput ? [h('h2', {}, 'Tool input'), h('pre', { class: 'artifact' }, JSON.stringify(detail.toolInput, null, 2)),
      detail.toolInputTruncated ? h('p', { class: 'hint' }, 'Cut short by the service.') : null] : null,
    gate.status === 'pending' && canDecide ? decideForm(id, detail, receiptBox) : null,
    gate.status === 'pending' && !canDecide ? h('p', { class: 'hint' }, 'Your token lacks the approvals:decide scope.') : null,
    receiptBox,
    h('h2', {}, 'Audit'),
    table('Gate audit', [
      ['When', (a) => when(a.at)],
      ['What', (a) => a.action],
      ['Who', (a) => a.actor],
      ['Detail', (a) => a.detail ?? ''],
    ], detail.audit));
}

function decideForm(id, detail, receiptBox) {
  const reason = h('textarea', { id: 'decision-reason', maxlength: 1000, 'aria-describedby': 'decision-hint' });
  const error = h('div', { class: 'error-box', role: 'alert', hidden: true });
  const options = detail.options ?? [];
  const choice = options.length ? h('fieldset', {}, h('legend', {}, 'Option'),
    options.map((o, i) => h('label', { class: 'check' },
      h('input', { type: 'radio', name: 'option', value: o.optionId, 'data-kind': o.kind, checked: i === 0 }), ` ${o.name} (${o.kind}) `))) : null;
  // One key per verdict on this form: a retry after a lost answer gets the same receipt.
  const keys = { approve: new RetryKey(), reject: new RetryKey() };
  const decide = async (decision) => {
    const body = { decision, decisionId: keys[decision].value };
    if (reason.value.trim()) body.reason = reason.value.trim();
    const picked = [...(choice?.querySelectorAll('input[name=option]') ?? [])]
      .filter((o) => o.dataset.kind.startsWith(decision === 'approve' ? 'allow' : 'reject'));
    const chosen = picked.find((o) => o.checked) ?? picked[0];
    if (chosen) body.optionId = chosen.value;
    const buttons = form.querySelectorAll('.actions button');
    for (const b of buttons) b.disabled = true;
    try {
      const answer = await api(`/v1/approval-gates/${seg(id)}/decision`, { method: 'POST', body });
      form.remove();
      replace(receiptBox, receipt(answer));
      replace(document.getElementById('gate-status'), badge(answer.status));
      announce(`Gate ${answer.status}`);
    } catch (e) {
      if (e.status === 409 && e.body?.receipt) {
        form.remove();
        replace(receiptBox, h('p', { class: 'notice' }, e.message), receipt(e.body.receipt));
        return;
      }
      error.hidden = false;
      error.textContent = errorText(e);
      for (const b of buttons) b.disabled = false;
      // A lost answer keeps its key, and so its reason and option, or a retry of a decision
      // that went through would be a conflict.
      if (keys[decision].keptAfter(e)) for (const field of form.querySelectorAll('textarea, input')) field.disabled = true;
    }
  };
  const form = h('form', { class: 'stacked', id: 'decide-form', 'aria-labelledby': 'decide-heading' },
    h('h2', { id: 'decide-heading' }, 'Decide'),
    choice,
    h('label', { for: 'decision-reason' }, 'Reason'),
    reason,
    h('p', { class: 'hint', id: 'decision-hint' }, 'Optional to approve; at least 10 characters to reject.'),
    error,
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'approve', onclick: () => decide('approve') }, 'Approve'),
      detail.maskedValues ? h('span', { class: 'hint', id: 'masked-values' },
        `${detail.maskedValues} value${detail.maskedValues === 1 ? '' : 's'} masked as credentials`) : null,
      h('button', { type: 'button', id: 'reject', class: 'danger', onclick: () => decide('reject') }, 'Reject')));
  form.addEventListener('submit', (event) => event.preventDefault());
  return form;
}

function receipt(r) {
  return h('div', { class: 'receipt', id: 'receipt' },
    h('h2', {}, 'Receipt'),
    facts([
      ['Receipt', r.receiptId],
      ['Outcome', badge(r.status)],
      ['Allowed', r.allow ? 'yes' : 'no'],
      ['Decided by', r.decidedBy],
      ['At', when(r.decidedAt)],
      ['Reason', r.reason],
      ['Option', r.optionId],
    ]));
}
