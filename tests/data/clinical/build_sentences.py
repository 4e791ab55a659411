"""Writes sentences.jsonl: (text, concept, label, source). Split by a fixed hash, not by looking."""

import hashlib
import json
from collections import Counter

P = "published"
rows = []


def add(source, text, **labels):
    for concept, label in labels.items():
        rows.append({"text": text, "concept": concept.replace("_", " "), "label": label, "source": source})


A, N = "affirmed", "negated"
Z = "authored"
# --- examples published with NegEx / ConText / medspacy (see README for each source) ---
add(
    "negex-algorithm-description",
    "The patient denies chest pain and has no shortness of breath.",
    chest_pain=N,
    shortness_of_breath=N,
)
add(
    "negex-algorithm-description",
    "The patient denies chest pain but has experienced some shortness of breath.",
    chest_pain=N,
    shortness_of_breath=A,
)
add("negex-algorithm-description", "She is tumor free.", tumor=N)
add("negex-algorithm-description", "No increase in tumor size.", tumor=A)
add("negex-algorithm-description", "Patient denies chest pain but continues to experience SOB.", chest_pain=N, sob=A)
add("medspacy-tests", "Pulmonary embolism has been ruled out.", pulmonary_embolism=N)
add("medspacy-tests", "There is no evidence of pneumonia.", pneumonia=N)
add("medspacy-tests", "There is no evidence of pneumonia or chf.", pneumonia=N, chf=N)
add("medspacy-tests", "There is evidence of pneumonia.", pneumonia=A)
add("medspacy-tests", "There is consolidation.", consolidation=A)
add("medspacy-tests", "No history of afib. No hx of MI.", afib=N, mi=N)
add("medspacy-tests", "History of pneumonia.", pneumonia=A)
add("medspacy-tests", "Family history of breast cancer.", breast_cancer=A)
add("medspacy-tests", "She is not prescribed any beta blockers for her hypertension.", beta_blocker=N, hypertension=A)
add("medspacy-tests", "Patient has a history of diabetes and history of renal failure", diabetes=A, renal_failure=A)
add(Z, "Blood cultures grew gram negative rods consistent with bacteremia.", bacteremia=A)
add(Z, "Stable appearance with no significant change in the pleural effusion.", pleural_effusion=A)
add(Z, "No interval change in the right lower lobe nodule.", nodule=A)
add(Z, "Heme negative stool, no melena.", melena=N)
add(Z, "Patient denies fever but has cough.", fever=N, cough=A)
# --- authored for this project (labels by the author; see README) ---
Z = "authored"
add(
    Z,
    "Patient denies fever, chills, nausea, vomiting or diarrhea.",
    fever=N,
    chills=N,
    nausea=N,
    vomiting=N,
    diarrhea=N,
)
add(Z, "He denied any chest pain.", chest_pain=N)
add(Z, "She denies headache or visual changes.", headache=N, visual_changes=N)
add(Z, "Denies abdominal pain. Reports mild nausea.", abdominal_pain=N, nausea=A)
add(
    Z,
    "The patient denied dysuria and hematuria but reports urinary frequency.",
    dysuria=N,
    hematuria=N,
    urinary_frequency=A,
)
add(Z, "Neck: supple, no lymphadenopathy.", neck_supple=A, lymphadenopathy=N)
add(Z, "Lungs: clear to auscultation bilaterally.", lungs_clear=A)
add(Z, "Abdomen: soft, non-tender.", abdomen_soft=A)
add(Z, "Extremities: no edema.", edema=N)
add(Z, "Skin: warm and dry, no rash.", rash=N)
add(Z, "Fever on admission. Today no fever.", fever=A)
add(Z, "Cough for two weeks. No cough at night.", cough=A)
add(Z, "Fever on admission, which has since resolved.", fever=N)
add(Z, "Admitted with fever. Fever resolved after antibiotics.", fever=N)
add(Z, "He is no longer short of breath; dyspnea resolved.", dyspnea=N)
add(Z, "Chest x-ray negative for pneumonia.", pneumonia=N)
add(Z, "Chest x ray shows a small pneumothorax.", pneumothorax=A, chest_x_ray=A)
add(Z, "Pneumothorax was ruled out.", pneumothorax=N)
add(Z, "Myocardial infarction has been ruled out by serial troponins.", myocardial_infarction=N)
add(Z, "Ruled out for pulmonary embolism.", pulmonary_embolism=N)
add(Z, "CT to rule out appendicitis.", appendicitis=A)
add(Z, "Rule out pneumonia.", pneumonia=A)
add(Z, "Evaluate for deep vein thrombosis.", deep_vein_thrombosis=A)
add(Z, "Free of infection at the wound site.", infection=N)
add(Z, "The wound is infection free.", infection=N)
add(Z, "Urine culture negative.", urine_culture=N)
add(Z, "Blood cultures were negative for bacteremia.", bacteremia=N)
add(Z, "No acute distress.", acute_distress=N)
add(Z, "No pleural effusion or pneumothorax.", pleural_effusion=N, pneumothorax=N)
add(Z, "No focal consolidation, effusion, or pneumothorax is seen.", consolidation=N, effusion=N, pneumothorax=N)
add(Z, "There is a small left pleural effusion. No pneumothorax.", pleural_effusion=A, pneumothorax=N)
add(Z, "Mild cardiomegaly without pulmonary edema.", cardiomegaly=A, pulmonary_edema=N)
add(Z, "Heart size is normal without cardiomegaly.", cardiomegaly=N)
add(Z, "Atelectasis at the left base, no consolidation.", atelectasis=A, consolidation=N)
add(Z, "Without evidence of fracture or dislocation.", fracture=N, dislocation=N)
add(Z, "Fracture of the distal radius; no dislocation.", fracture=A, dislocation=N)
add(Z, "Patient is not anemic.", anemic=N)
add(Z, "She does not have diabetes.", diabetes=N)
add(Z, "He has diabetes but not hypertension.", diabetes=A, hypertension=N)
add(Z, "No history of stroke, but he has hypertension.", stroke=N, hypertension=A)
add(Z, "Absence of jaundice.", jaundice=N)
add(Z, "Jaundice is absent.", jaundice=N)
add(Z, "Absent bowel sounds.", bowel_sounds=N)
add(Z, "Pulses are present and symmetric; edema is absent.", pulses=A, edema=N)
add(Z, "Never had seizures.", seizure=N)
add(Z, "Patient reports chest pain radiating to the left arm.", chest_pain=A)
add(Z, "Complains of productive cough and fever.", cough=A, fever=A)
add(Z, "Positive for cough, negative for fever.", cough=A, fever=N)
add(
    Z,
    "Review of systems is negative for weight loss, night sweats, and fatigue.",
    weight_loss=N,
    night_sweats=N,
    fatigue=N,
)
add(Z, "ROS: denies palpitations, syncope.", palpitations=N, syncope=N)
add(Z, "Pneumonia unlikely given the clear film.", pneumonia=N)
add(Z, "Findings are consistent with pneumonia.", pneumonia=A)
add(Z, "Cannot exclude a small pneumothorax.", pneumothorax=A)
add(Z, "No definite change in the size of the mass.", mass=A)
add(Z, "No new infiltrates.", infiltrate=N)
add(Z, "No suspicious lesions.", lesion=N)
add(Z, "The patient was not in respiratory distress.", respiratory_distress=N)
add(Z, "Not only pain but also swelling of the knee.", pain=A, swelling=A)
add(Z, "Rash noted on the trunk, not on the face.", rash=A)
add(Z, "No rash on the face; rash noted on the trunk.", rash=A)
add(Z, "Nausea without vomiting.", nausea=A, vomiting=N)
add(Z, "Headache without photophobia or neck stiffness.", headache=A, photophobia=N, neck_stiffness=N)
add(Z, "Patient ambulates without difficulty and has mild back pain.", back_pain=A)
add(Z, "No fevers, chills, or night sweats; positive for weight loss.", fever=N, chill=N, night_sweats=N, weight_loss=A)
add(Z, "Dyspnea on exertion. Denies orthopnea.", dyspnea=A, orthopnea=N)
add(Z, "Denies tobacco, alcohol or drug use.", tobacco=N, alcohol=N, drug_use=N)
add(Z, "Alcohol use: none.", alcohol=N)
add(Z, "Allergies: none known.", allergy=N)
add(Z, "He has a known allergy to penicillin.", allergy=A)
add(Z, "Hepatomegaly. No splenomegaly.", hepatomegaly=A, splenomegaly=N)
add(Z, "The liver is enlarged; splenomegaly is not present.", splenomegaly=N)
add(Z, "Murmur not heard.", murmur=N)
add(Z, "A systolic murmur is heard.", murmur=A)
add(Z, "There is no evidence of metastatic disease.", metastatic_disease=N)
add(Z, "Metastatic disease to the liver.", metastatic_disease=A)
add(Z, "No signs of infection.", infection=N)
add(Z, "Signs of infection around the catheter.", infection=A)
add(Z, "Wound without erythema or drainage.", erythema=N, drainage=N)
add(Z, "Erythema around the wound, without drainage.", erythema=A, drainage=N)
add(Z, "She declined the flu vaccine.", flu_vaccine=N)
add(Z, "Negative for chest pain, shortness of breath.", chest_pain=N, shortness_of_breath=N)
add(Z, "Shortness of breath improved but persists.", shortness_of_breath=A)
add(Z, "Tenderness: none.", tenderness=N)
add(Z, "Abdominal tenderness present in the right lower quadrant.", abdominal_tenderness=A)
add(Z, "No edema. Edema of the left ankle noted on day 2.", edema=A)
add(Z, "Syncope, which was attributed to dehydration.", syncope=A, dehydration=A)
add(Z, "Chest pain secondary to costochondritis, no myocardial infarction.", chest_pain=A, myocardial_infarction=N)
add(Z, "No chest pain secondary to exertion.", chest_pain=N)
add(Z, "The patient has no complaints of dizziness.", dizziness=N)
add(Z, "Tested for influenza, which was negative.", influenza=N)
add(Z, "Influenza A positive.", influenza=A)
add(Z, "COVID-19 test negative.", covid_19=N)
add(Z, "COVID-19 pneumonia.", covid_19=A, pneumonia=A)
add(Z, "Fails to reveal any mass.", mass=N)
add(Z, "Sensation intact, no numbness or tingling.", numbness=N, tingling=N)
add(Z, "Numbness of the left hand, no weakness.", numbness=A, weakness=N)
add(Z, "Patient is afebrile without cough.", cough=N)
add(Z, "Ulcer on the heel, healing well, no signs of osteomyelitis.", ulcer=A, osteomyelitis=N)
add(Z, "Seizures have resolved on levetiracetam.", seizure=N)
add(Z, "Asthma, well controlled.", asthma=A)
add(Z, "No asthma exacerbation this year; asthma since childhood.", asthma=A)
add(Z, "Edema has resolved. No edema on exam.", edema=N)
add(Z, "No acute fracture. Old healed fracture of the left rib.", fracture=A)
add(Z, "No lymphadenopathy, hepatosplenomegaly, or masses palpated.", lymphadenopathy=N, hepatosplenomegaly=N, mass=N)
add(Z, "Pupils: equal, round, reactive.", pupils_equal=A)
add(Z, "Gait: steady; no ataxia.", ataxia=N)
add(Z, "Depression screen negative.", depression=N)
add(Z, "History of depression, currently denies suicidal ideation.", depression=A, suicidal_ideation=N)
add(Z, "Pain is 0/10; denies pain.", pain=N)
add(Z, "Reports pain 7/10 in the lower back.", pain=A)
add(Z, "Sore throat for three days, no fever and no cough.", sore_throat=A, fever=N, cough=N)
add(Z, "Vomiting twice this morning, and diarrhea.", vomiting=A, diarrhea=A)
add(Z, "Diarrhea is not bloody.", diarrhea=A)
add(Z, "No blood in the stool.", blood_in_the_stool=N)
add(Z, "Rales were heard at both bases.", rales=A)
add(Z, "Clear lungs without wheezes, rales, or rhonchi.", wheeze=N, rales=N, rhonchi=N)
# --- public sentences from other projects (issue 18 follow-up; repository, path and licence of each
# source in README.md). Text verbatim except: line breaks inside a sentence and "<br/>" markup joined
# with one space, and the "¿" of ctakes-client-py's file (a mis-encoded space) written as a space. Labels
# are ours, following the conventions above (possible = affirmed, resolved = negated); the labels the
# source's own test asserts were kept where it asserts one. None of these rows was used to tune negation.py.
C = "ctakes-ytex-fracture-demo"  # apache/ctakes ctakes-ytex/scripts/data/examples/fracture_demo.txt
add(C, "There is evidence of a lateral tibial plateau fracture.", fracture=A)
add(C, "Soft tissues demonstrate arterial calcification.", arterial_calcification=A)
add(C, "Chondrocalcinosis identified involving the lateral compartment of the knee.", chondrocalcinosis=A)
add(
    C,
    "Findings: At the fourth distal metatarsal there is a oblique fracture with slight lateral displacement.",
    fracture=A,
)
add(C, "There are no other acute fractures or dislocations.", dislocation=N)
add(
    C,
    "There is moderate degenerative changes of the first tarsal- metatarsal joint with subchondral cysts and osteophyte formation.",
    subchondral_cyst=A,
    osteophyte_formation=A,
)
add(C, "There is ossification of the interosseous membrane due to prior trauma.", ossification=A)
add(C, "There is no apparent leg length discrepancy.", leg_length_discrepancy=N)
add(C, "There is no radiographic evidence of loosening of the prosthesis.", loosening=N)
add(C, "There are no fractures or dislocations.", fracture=N, dislocation=N)
add(C, "No other evidence of degenerative changes seen.", degenerative_change=N)
add(C, "Lungs are clear focal consolidation.", consolidation=N)
add(C, "No lung masses or nodules appreciated.", lung_mass=N, nodule=N)
add(C, "There are no pleural pericardial effusions.", pericardial_effusion=N)
add(C, "Right lower base pleural thickening is stable.", pleural_thickening=A)
add(C, "There is no axillary, hilar, or mediastinal lymphadenopathy by CT size criteria.", lymphadenopathy=N)
add(C, "Again there is an intramedullary fracture in the tibia.", fracture=A)
add(C, "Joint space narrowing is noted at the lateral compartment of the left knee.", joint_space_narrowing=A)
add(C, "Opacification of the frontal sinus on the right side.", opacification=A)
add(C, "Linear streaking of the occipital bone, likely a non displaced fracture.", fracture=A)
add(C, "A fracture of the distil humerus is noted.", fracture=A)
add(
    C,
    "Chest reveals linear opacity in right base which could be due to atelectasis since January 16, 2011.",
    opacity=A,
    atelectasis=A,
)
add(C, "There is no congestive heart failure, infiltrate.", congestive_heart_failure=N, infiltrate=N)
add(C, "There are degenerative changes in thoracic spine.", degenerative_change=A)
add(C, "There are vascular calcifications in the thoracic aorta.", vascular_calcification=A)
add(C, "Conclusion: No acute cardiopulmonary disease.", cardiopulmonary_disease=N)
add(C, "There is no congestive failure.", congestive_failure=N)
add(C, "There is no adenopathy or pleural effusion.", adenopathy=N, pleural_effusion=N)
add(
    C,
    "There are old healed fractures of the left second through sixth ribs and an old fracture of the left clavicle.",
    fracture=A,
)
add(C, "The interphalangeal joint shows mild narrowing.", narrowing=A)
add(C, "Summary: osteoarthritic changes.", osteoarthritic_change=A)
add(C, "normal osseous development and no fracture is seen.", fracture=N)
add(C, "There no acute infiltrates or effusions.", infiltrate=N, effusion=N)
add(C, "An old fracture of the left third rib is evident.", fracture=A)
add(
    C,
    "Menisci: There is intrasubstance degeneration in the lateral meniscus without discrete tear.",
    degeneration=A,
    tear=N,
)
add(
    C,
    "There is complex degeneration of the posterior horn and body of the medial meniscus with extrusion.",
    extrusion=A,
)
add(C, "Ligaments: There is increased signal within it the ACL consistent with degeneration.", degeneration=A)
add(
    C,
    "There are extensive degenerative changes in the medial compartment with diffuse cartilage loss in the weight bearing region.",
    degenerative_change=A,
    cartilage_loss=A,
)
add(C, "Note is made of a distil femur hairline fracture not previously noted.", hairline_fracture=A)
add(C, "The liver is heterogeneous with no focal lesion.", focal_lesion=N)
add(C, "No hydronephrosis is noted.", hydronephrosis=N)
add(
    C,
    "A hypoechogenic lesion in the superior pole of the right kidney is noted measuring 1.6 x 1.2 cm that may suggest a cyst..",
    lesion=A,
    cyst=A,
)
add(
    C,
    "Again bilateral aneurysm of common iliac arteries is noted measuring 1.8 x 1.9 cm on the right and 1.6 x 1.9 cm in the left side.",
    aneurysm=A,
)
add(C, "There is no fluid in the Morrison's pouch.", fluid=N)
add(
    C,
    "Conclusion: Heterogeneous liver with no focal lesion. Stable aneurysm of common iliac arteries.",
    focal_lesion=N,
    aneurysm=A,
)
add(C, "Bony mineralization is normal. There is no evidence of a fracture.", fracture=N)
add(C, "There is a non dislocated fracture. No other significant bone or joint abnormality.", fracture=A)
add(C, "Diffuse osteopenia with evidence of L1-2 compression fracture.", osteopenia=A, compression_fracture=A)
add(
    C,
    "Routine views of the left foot demonstrate normal development and no fracture or dislocation.",
    fracture=N,
    dislocation=N,
)
add(C, "No foreign bodies seen.", foreign_body=N)
add(
    C,
    "There is probable soft tissue swelling about the head of the metatarsals and there is some minimal vascular calcification noted.",
    soft_tissue_swelling=A,
    vascular_calcification=A,
)
add(C, "There is no evidence of axillary, hilar or mediastinal adenopathy.", adenopathy=N)
add(
    C,
    "There is extensive calcification of the coronary arteries as well as some calcification of the aorta.",
    calcification=A,
)
add(C, "There are no lytic or sclerotic lesions visualized.", sclerotic_lesion=N)
add(
    C,
    "Findings: There is now evidence of a nondisplaced fracture involving the right superior pubic ramus close to the symphysis.",
    fracture=A,
)
add(
    C,
    "There is diffuse osteopenia with a stable old healed right intertrochanteric fracture with internal stabilization as well as a left subcapital fracture internally stabilized as well.",
    osteopenia=A,
    fracture=A,
)
add(C, "There is heavy aorto iliac and branch calcification.", calcification=A)
add(
    C,
    "There is no rib fracture, rib abnormality, pneumothorax, or pleural effusion.",
    rib_fracture=N,
    pneumothorax=N,
    pleural_effusion=N,
)
add(C, "There is no evidence of congestive failure and the lungs are now clear.", congestive_failure=N)
add(C, "No acute rib fracture, pneumothorax, or pleural effusion.", rib_fracture=N, pneumothorax=N, pleural_effusion=N)
add(C, "No active cardiopulmonary disease.", cardiopulmonary_disease=N)
add(
    C,
    "Again there is tricompartmental degenerative arthropathy with joint space narrowing which is worst at the lateral facet of the patellofemoral joint, and tricompartmental osteophytes.",
    arthropathy=A,
    joint_space_narrowing=A,
    osteophyte=A,
)
add(C, "There is no significant knee joint effusion.", joint_effusion=N)
add(
    C,
    "Findings: Multiple images of the right shoulder reveal a full thickness, near full width tear of supraspinatus tendon with a few anterior fibers remaining.",
    tear=A,
)
add(
    C,
    "There is mild fatty atrophy of the supraspinatus and moderate fatty atrophy of the infraspinatus muscle.",
    fatty_atrophy=A,
)
add(C, "There is superior subluxation of the humeral head.", subluxation=A)
add(C, "Thickening and increased signal of the subscapularis tendon is consistent with tendinopathy.", tendinopathy=A)
add(C, "There is a healing comminuted spiral fracture of the proximal phalanx of the fifth digit.", fracture=A)
add(
    C,
    "Four views of the left ribs reveal fractures of the left ribs at the mid axillary line of the left 5, 6, 7, 8 and 9th ribs.",
    fracture=A,
)
add(C, "There is no definite hemothorax on the left side.", hemothorax=N)
add(C, "No evidence for hydronephrosis.", hydronephrosis=N)
add(C, "heterogenous liver with no focal lesions.", focal_lesion=N)
add(C, "No evidence for aortic aneurysm.", aortic_aneurysm=N)
add(C, "No free fluid.", free_fluid=N)
add(C, "Summary: no fracture is seen.", fracture=N)
C = "ctakes-example-notes"  # apache/ctakes: fictitious notes of the cTAKES examples and regression tests (README)
add(
    C,
    "Again seen is a large ventral hernia containing multiple nonobstructed loops of small bowel and ascending colon.",
    ventral_hernia=A,
)
add(C, "No evidence of vascular compromise within this hernial sac.", vascular_compromise=N)
add(C, "Possible diffuse fatty infiltration of the liver.", fatty_infiltration=A)
add(C, "Severe atrophy of the left kidney.", atrophy=A)
add(C, "Low-lying urinary bladder with a possible small cystocele.", cystocele=A)
add(C, "Sigmoid diverticulosis.", diverticulosis=A)
add(C, "Minimal atelectasis or fibrosis in the lung bases.", atelectasis=A, fibrosis=A)
add(C, "Diffuse tibial artery disease with posterior tibial occlusion.", occlusion=A)
add(C, "Right hypogastric artery stenosis.", stenosis=A)
add(C, "No associated soft tissue mass or fluid collections.", soft_tissue_mass=N, fluid_collection=N)
add(C, "Ulceration of soft tissues distally.", ulceration=A)
add(C, "No radiographic evidence of osteomyelitis.", osteomyelitis=N)
add(C, "No radiographic evidence of loosening.", loosening=N)
add(C, "Extensive arterial calcification.", arterial_calcification=A)
add(
    C,
    "As physical examination by the primary care provided did show small hemorrhoids but, as stool was strongly positive for blood, he was referred for a repeat colonoscopy.",
    hemorrhoid=A,
)
add(C, "Biopsies were positive for grade 3 out of 4 adenocarcinoma.", adenocarcinoma=A)
add(
    C,
    "The patient underwent a staging CT scan early April, which did not reveal obvious intra-abdominal spread and large lymph nodes, or metastatic lesions in his liver.",
    **{"intra-abdominal spread": N, "metastatic lesion": N},
)
add(C, "The patient has a history of psoriatic arthritis.", psoriatic_arthritis=A)
add(
    C,
    "He also has a history of thyroid insufficiency, and has been on Synthroid for the last 25 years.",
    thyroid_insufficiency=A,
)
add(C, "Skin: Psoriasis over the kneecaps and elbows, and within his hair.", psoriasis=A)
add(C, "Heart:  Core S1, S2, no murmur.", murmur=N)
add(C, "Abdomen:  Soft and nontender.  No obvious masses.", mass=N)
add(C, "Extremities:  No signs of joint damage due to his psoriatic arthritis.", joint_damage=N, psoriatic_arthritis=A)
add(C, "Rect:  Normal prostate, no masses palpable.", mass=N)
add(
    C,
    "#1 Colorectal cancer of the cecum, biopsy proven.  No evidence for metastatic disease",
    colorectal_cancer=A,
    metastatic_disease=N,
)
add(C, "MRI of the left breast was without malignancy.", malignancy=N)
add(C, "Neck: Supple, no masses, thyroid not enlarged", mass=N)
add(C, "LUNGS: CTA, No wheezes, rales, rhonchi", wheeze=N, rales=N, rhonchi=N)
add(
    C,
    "This is a 50 year old peri-menopausal female with clinical stage 2A (T1,N2,M0) infiltrating ductal carcinoma.",
    ductal_carcinoma=A,
)
add(C, "OMENTUM; EXCISION: ADIPOSE TISSUE; NEGATIVE FOR MALIGNANCY.", malignancy=N)
add(C, "Denies STIs and abnormal paps.", sti=N, abnormal_pap=N)
add(C, "EEG to r/o seizure disorder.", seizure_disorder=A)
add(C, "It occurred last week and has caused immense leg pain.", leg_pain=A)
add(C, "The patient reported pain in her upper arm.\nNo swelling.", pain=A, swelling=N)
C = "ctakes-client-py-tests"  # Machine-Learning-for-Medical-Language/ctakes-client-py (README)
add(C, "Denies any fevers or chills, sore throat, anosmia, cough.", fever=N, chill=N, sore_throat=N, anosmia=N, cough=N)
add(
    C,
    "Presents for a 5-day history of headache,sore throat, fever up to 100.5,cough,anosmia, dysgeusia.",
    headache=A,
    sore_throat=A,
    fever=A,
    cough=A,
    anosmia=A,
    dysgeusia=A,
)
add(
    C,
    "The patient has a sore knee and headache but denies nausea and has no anosmia.",
    sore_knee=A,
    headache=A,
    nausea=N,
    anosmia=N,
)
add(
    C,
    "ENMT: no ear pain, no sore throat, no congestion, pharyngitis",
    ear_pain=N,
    sore_throat=N,
    congestion=N,
    pharyngitis=N,
)
add(C, "Respiratory: no shortness of breath, cough,", shortness_of_breath=N, cough=N)
add(C, "Neurologic:  no weakness, no headaches", weakness=N, headache=N)
add(C, "Heme/Lymph: no bleeding tendency, no bruising tendency, no swollen nodes", bleeding_tendency=N, swollen_node=N)
C = "negspacy-tests"  # jenojp/negspacy tests/test_scispacy_dep.py, negspacy/test.py
add(C, "Patient denies cardiovascular disease but has headaches.", cardiovascular_disease=N, headache=A)
add(C, "No history of smoking.", smoking=N)
add(C, "Alcoholism unlikely.", alcoholism=N)
add(C, "Smoking not ruled out.", smoking=A)
add(C, "No history of headaches, prbc, smoking, acid reflux, or GERD.", headache=N, smoking=N, acid_reflux=N, gerd=N)
add(C, "Alcoholism was not the cause of liver disease.", alcoholism=N, liver_disease=A)
add(C, "There was no headache for this patient.", headache=N)
add(C, "The patient has a cancer free diagnosis", cancer=N)
C = "fastcontext-tests"  # jianlins/FastContext src/test/java/edu/utah/bmi/nlp/fastcontext/TestFastContextExampleCases.java
add(C, "He is smoke free .", smoke=N)
add(C, "The fever may be caused by the infection .", fever=A, infection=A)
add(C, "The patient has a long history of HTN .", htn=A)
add(C, "He denied any drug abuse, as well as heavy drink history .", drug_abuse=N, heavy_drink=N)
add(C, "He denied any drug abuse, but did have heavy drink history .", drug_abuse=N, heavy_drink=A)
add(C, "The patient is 45 yo male with history of HTN and diabetes .", htn=A, diabetes=A)
add(C, "The thrombus extends up to the axillary confluence does not enter into the deep venous system", thrombus=A)
add(C, "He denied history of smoking .", smoking=N)
add(C, "He history of smoking : no .", smoking=N)
C = "negbio-tests"  # ncbi-nlp/NegBio tests/data/00019248.txt, tests/data/00000086.txt (OpenI reports)
add(C, "mild cardiomegaly.", cardiomegaly=A)
add(C, "no evidence of focal infiltrate, effusion or pneumothorax.", infiltrate=N, effusion=N, pneumothorax=N)
add(C, "air- filled cystic changes. no pneumothorax.", cystic_change=A, pneumothorax=N)
add(C, "osseous structures unchanged scoliosis", scoliosis=A)
C = "chexpert-labeler-samples"  # stanfordmlgroup/chexpert-labeler sample_reports.csv
add(C, "Heart size normal and lungs are clear. No edema or pneumonia. No effusion", edema=N, pneumonia=N, effusion=N)
add(
    C,
    "1. Left pleural effusion with adjacent atelectasis. Right effusion is also present.",
    pleural_effusion=A,
    atelectasis=A,
)
add(C, "2. Cardiomegaly without overt edema.", cardiomegaly=A, edema=N)
add(
    C,
    "Minimal patchy airspace disease within the lingula, may reflect atelectasis or consolidation.",
    airspace_disease=A,
    atelectasis=A,
    consolidation=A,
)
add(C, "1. Stable mild cardiomegaly. 2. Hyperexpanded but clear lungs.", cardiomegaly=A)
C = "medspacy-notebooks"  # medspacy/medspacy notebooks/context/4_Use_Cases.ipynb
add(C, "No radiographic evidence of pneumonia.", pneumonia=N)
add(C, "Likely CHF, infiltrate.", chf=A, infiltrate=A)
add(C, "IMPRESSION:  Left lower lobe pneumonia.", pneumonia=A)
add(C, "Possible consolidation.", consolidation=A)
add(C, "There is abscess in the abdomen.", abscess=A)
add(C, "There is a collection of fluid in the jejunum.", collection_of_fluid=A)
add(C, "hematomas are seen around the right lower quadrant", hematoma=A)
C = "authored-issue52"  # written for this project for issue 52's regressions (labels by the author; README)
add(C, "No effusion, large pneumothorax, or consolidation.", effusion=N, pneumothorax=N, consolidation=N)
add(C, "There is no focal airspace opacity, large effusion, or pneumothorax.", opacity=N, effusion=N, pneumothorax=N)
add(C, "No adenopathy, small nodule, or mass is seen.", adenopathy=N, nodule=N, mass=N)
add(C, "No edema, mild atelectasis.", edema=N, atelectasis=A)
add(C, "There are no further signs or symptoms of infection.", infection=N)
add(C, "No further signs of bleeding after the procedure.", bleeding=N)
add(C, "The abdomen is soft with no evidence for obstruction or perforation.", obstruction=N, perforation=N)
add(C, "Chest radiograph with no evidence for pneumonia or effusion.", pneumonia=N, effusion=N)
add(C, "The lungs are clear of infiltrate.", infiltrate=N)
add(C, "The surgical margins are clear of tumor.", tumor=N)
add(C, "No fever/chills overnight.", fever=N, chills=N)
add(C, "Denies nausea/vomiting.", nausea=N, vomiting=N)
add(C, "Reports nausea/vomiting since yesterday.", nausea=A, vomiting=A)
add(C, "No weight bearing until the fracture heals.", fracture=A)
add(C, "No driving because of the seizure last week.", seizure=A)
add(C, "The patient stopped taking warfarin.", warfarin=N)
add(C, "She quit smoking in 2015.", smoking=N)
add(C, "The patient feels free to call the clinic.", clinic=A)
add(C, "Patient is symptom free and the wound is healing.", symptom=N, wound=A)
add(C, "No rash, although mild pruritus persists.", rash=N, pruritus=A)
for r in rows:
    h = int(hashlib.sha256((r["text"] + "|" + r["concept"]).encode()).hexdigest(), 16)
    r["split"] = "dev" if h % 2 == 0 else "heldout"
with open("sentences.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
print(
    len(rows),
    Counter(r["split"] for r in rows),
    Counter((r["split"], r["label"]) for r in rows),
    Counter(r["source"] for r in rows),
)
